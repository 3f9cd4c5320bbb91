//! InfiniBand in a run split across threads (`engine/partition.rs`): the congestion tree's
//! causes asked of another partition, and the fold of a partition's credit state into the
//! whole fabric's.
//!
//! ## A stall's cause across partitions
//! When an output waits for credits, the congestion tree records the port that the head of
//! the downstream input buffer waits for ([`Fabric::downstream_cause`]): a read of the next
//! switch at the stall's start. On a link between partitions that switch is another
//! partition's, running the same window on another thread. Its head at that instant is known
//! once the window is over: the partition that owns the buffer records each change of that
//! cause (the head's output, or a virtual output queue input's majority output) in the window,
//! with the place of the event that made it in the run's order (time, then the
//! origin `Scheduler::current_origin` gives; origins never tie across partitions), and answers
//! the question at the hand-over; the answer travels back with the next window's hand-over.
//! Until it arrives the stall's cause is a token ([`CAUSE_ASKED`]); a stall closed before then
//! waits in [`IbState`]'s `unresolved` and adds its time to the tree's edge when the answer
//! comes. The tree is a sum of stall times per (port, cause), so adding later changes nothing:
//! the edges are the single-threaded run's, to the picosecond.

use super::*;

/// Causes at or above this (and below [`NO_EDGE`]) are tokens: the partition that owns the
/// downstream buffer has yet to say what its head waited for. Bits 24-29 hold the asking
/// partition (below [`crate::engine::MAX_PARTITIONS`] = 64), the low 24 a counter.
pub(in crate::engine) const CAUSE_ASKED: u32 = 1 << 31;

/// Whether stall cause `c` is a token still to be answered.
#[inline]
pub(super) fn is_asked(c: u32) -> bool {
    (CAUSE_ASKED..NO_EDGE).contains(&c)
}

/// The token of the `n`-th question partition `me` asks (the counter wraps at 2^24; a token
/// is answered one window later, so no two pending ones meet).
pub(in crate::engine) fn cause_token(me: u8, n: u32) -> u32 {
    debug_assert!((me as usize) < crate::engine::MAX_PARTITIONS);
    CAUSE_ASKED | (me as u32) << 24 | (n & 0xFF_FFFF)
}

impl IbState {
    /// The answer to token `token`, asked for lane (`p`, `vl`): the port its downstream head
    /// waited for. An open stall takes it as its cause; a closed one adds its time to the edge.
    pub(in crate::engine) fn resolve_cause(&mut self, p: u32, vl: u8, token: u32, cause: u32) -> bool {
        let i = self.ix(p, vl);
        let st = &mut self.stalls[i];
        if st.since != SimTime::MAX && st.cause == token {
            // Still open (a closed one keeps its last cause until the next opens).
            st.cause = cause;
            return true;
        }
        match self.unresolved.remove(&token) {
            Some((port, ps)) => {
                debug_assert_eq!(port, p, "an answer for another port's stall");
                *self.stall_edges.entry((port, cause)).or_insert(0) += ps;
                true
            }
            None => false,
        }
    }

    /// Folds partition `o`'s InfiniBand state into this one (see `Fabric::absorb`): every
    /// port's, lane's and host's state from the partition that ran it, packet ids through
    /// `rehome`, counters and the congestion tree summed.
    pub(in crate::engine) fn absorb(
        &mut self,
        o: &mut IbState,
        theirs_port: &[bool],
        theirs_host: &[bool],
        rehome: &mut dyn FnMut(u32) -> u32,
    ) {
        let nv = self.nv;
        for (p, _) in theirs_port.iter().enumerate().filter(|(_, t)| **t) {
            for i in p * nv..(p + 1) * nv {
                // The sending side of the port's lanes.
                self.fctbs[i] = o.fctbs[i];
                self.fccl[i] = o.fccl[i];
                std::mem::swap(&mut self.requests[i], &mut o.requests[i]);
                self.out_bytes[i] = o.out_bytes[i];
                self.stalls[i] = o.stalls[i];
                self.mark[i] = o.mark[i];
                // The receiving side, and a crossbar output's queue.
                self.inq[i] = o.inq[i].iter().map(|&id| rehome(id)).collect();
                self.voq[i] = o.voq[i]
                    .iter()
                    .map(|e| VoqEntry {
                        id: rehome(e.id),
                        ingress: e.ingress,
                    })
                    .collect();
                self.voq_cause[i] = o.voq_cause[i];
                self.free_blocks[i] = o.free_blocks[i];
                self.pool_lent[i] = o.pool_lent[i];
                self.abr[i] = o.abr[i];
                self.head_deadline[i] = o.head_deadline[i];
                self.voq_deadline[i] = o.voq_deadline[i];
                self.fc_state[i] = o.fc_state[i];
                self.fc_last_sent[i] = o.fc_last_sent[i];
                self.fc_due[i] = o.fc_due[i];
                self.fc_last_fccl[i] = o.fc_last_fccl[i];
            }
            self.xbar_free_at[p] = o.xbar_free_at[p];
            self.pool_free[p] = o.pool_free[p];
            self.arb[p] = o.arb[p].clone();
            self.ctrl[p] = o.ctrl[p];
            self.tx_release[p] = o.tx_release[p];
            self.timer_at[p] = o.timer_at[p];
            self.in_blocks[p] = o.in_blocks[p];
            std::mem::swap(&mut self.port_stats[p], &mut o.port_stats[p]);
        }
        self.xbar.absorb(&o.xbar, theirs_port);
        for (h, _) in theirs_host.iter().enumerate().filter(|(_, t)| **t) {
            for q in self.hf(h as u32, 0)..self.hf(h as u32 + 1, 0) {
                std::mem::swap(&mut self.host_flows[q], &mut o.host_flows[q]);
            }
            self.cnp_queue[h] = o.cnp_queue[h].iter().map(|&id| rehome(id)).collect();
        }
        self.totals.absorb(&o.totals);
        self.occupancy_on_arrival
            .add(&o.occupancy_on_arrival)
            .expect("histograms of one configuration add up");
        for (k, d) in std::mem::take(&mut o.stall_edges) {
            *self.stall_edges.entry(k).or_insert(0) += d;
        }
        self.unresolved.append(&mut o.unresolved);
    }
}

impl IbTotals {
    /// Adds another partition's counters.
    fn absorb(&mut self, o: &IbTotals) {
        // Destructured so that a new counter cannot be forgotten here.
        let IbTotals {
            fc_packets,
            hoq_drops,
            fecn_marked,
            becn_sent,
            becn_received,
        } = o;
        self.fc_packets += fc_packets;
        self.hoq_drops += hoq_drops;
        self.fecn_marked += fecn_marked;
        self.becn_sent += becn_sent;
        self.becn_received += becn_received;
    }
}

impl Fabric {
    /// The cause of a stall of (`p`, `vl`) starting now: read downstream, or asked of the
    /// partition that runs the far end (module docs).
    pub(in crate::engine) fn ib_stall_cause<Q: EventQueue<Ev>>(&mut self, s: &Scheduler<Ev, Q>, p: u32, vl: u8) -> u32 {
        if self.part.is_some() {
            let peer = self.ports[p as usize].peer_node;
            if !self.runs_node(peer) && !self.is_host[peer as usize] {
                return self.ask_cause(s.now(), s.current_origin(), p, vl);
            }
        }
        self.downstream_cause(p, vl)
    }

    /// What a stall upstream of input lane (`x`, `vl`) would name as its cause may have
    /// changed (its head, its queued packets' votes): a partition records it where another
    /// partition may ask (module docs). A branch on the single-threaded path.
    #[inline(always)]
    pub(in crate::engine) fn ib_cause_may_change<Q: EventQueue<Ev>>(&mut self, s: &Scheduler<Ev, Q>, x: u32, vl: u8) {
        if self.part.is_some() {
            self.note_cause(s.now(), s.current_origin(), x, vl);
        }
    }

    /// Packet of input `x` left position `k` of output (`p`, `vl`)'s virtual output queue,
    /// which held `len_before`: `x`'s cause may have changed, and so may the cause of the
    /// input whose packet moved into the first `SCAN_MAX` the cause counts.
    #[inline(always)]
    pub(in crate::engine) fn ib_voq_left<Q: EventQueue<Ev>>(
        &mut self,
        s: &Scheduler<Ev, Q>,
        (p, vl): (u32, u8),
        x: u32,
        k: usize,
        len_before: usize,
    ) {
        if self.part.is_some() {
            let (now, origin) = (s.now(), s.current_origin());
            self.note_cause(now, origin, x, vl);
            let scan = crate::models::crossbar::oldest::SCAN_MAX;
            if k < scan && len_before > scan {
                let ib = self.ibr();
                let z = ib.voq[ib.ix(p, vl)][scan - 1].ingress;
                self.note_cause(now, origin, z, vl);
            }
        }
    }
}
