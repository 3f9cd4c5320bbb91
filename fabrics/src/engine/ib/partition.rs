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

/// Partitioned runs only: per input lane of a virtual-output-queue switch fed from another
/// partition, and per output of that switch, how many of the input's packets lie among the
/// first `SCAN_MAX` of the output's queue. That is what [`Fabric::cause_at_input`] counts
/// when the majority vote names no output. A partition works out that cause on every change
/// at such an input (`note_cause`); counting the queues each time (32 of them at k = 32)
/// took 7 % of a two-thread InfiniBand k = 32 run, and one row of counters gives the same
/// answer. Elsewhere the cause is asked for only when a stall begins, and the queues are
/// counted then (the counters would cost more, kept on every hop).
#[derive(Debug, PartialEq, Eq)]
pub(in crate::engine) struct VoqHeld {
    /// Per node: where its rows start (`usize::MAX`: not a `voq` node).
    base: Vec<usize>,
    /// Row of input lane (`x`, `vl`) of a node with ports `pb..pb + np`: starts at
    /// `base + ((x - pb) * nv + vl) * np`, one counter per output `pb..pb + np` (at most
    /// `SCAN_MAX` = 64, so a byte).
    counts: Vec<u8>,
    nv: usize,
}

impl Fabric {
    /// The counters of the virtual output queues as they are now (`None` without any; rows
    /// of inputs fed from this partition stay zero).
    pub(in crate::engine) fn voq_held_now(&self) -> Option<VoqHeld> {
        let ib = self.ib.as_deref()?;
        let nv = ib.nv;
        let scan = crate::models::crossbar::oldest::SCAN_MAX;
        let mut base = vec![usize::MAX; self.port_base.len() - 1];
        let mut len = 0usize;
        for (n, b) in base.iter_mut().enumerate() {
            let (pb, pe) = (self.port_base[n], self.port_base[n + 1]);
            if pe > pb && ib.voq_port[pb as usize] {
                *b = len;
                len += (pe - pb) as usize * (pe - pb) as usize * nv;
            }
        }
        if len == 0 {
            return None;
        }
        let mut held = VoqHeld {
            base,
            counts: vec![0; len],
            nv,
        };
        for out in 0..self.ports.len() as u32 {
            if !ib.voq_port[out as usize] {
                continue;
            }
            for vl in 0..nv as u8 {
                let queue = ib.voq[ib.ix(out, vl)].iter().take(scan);
                for e in queue.filter(|e| self.fed_from_another_partition(e.ingress)) {
                    let c = self.voq_held_cell(&held, e.ingress, vl, out);
                    held.counts[c] += 1;
                }
            }
        }
        Some(held)
    }

    /// The counter of input lane (`x`, `vl`) for output `out` (ports of one `voq` node).
    #[inline(always)]
    fn voq_held_cell(&self, held: &VoqHeld, x: u32, vl: u8, out: u32) -> usize {
        let node = self.ports[x as usize].node as usize;
        let pb = self.port_base[node];
        let np = (self.port_base[node + 1] - pb) as usize;
        debug_assert_ne!(held.base[node], usize::MAX, "a voq node");
        held.base[node] + ((x - pb) as usize * held.nv + vl as usize) * np + (out - pb) as usize
    }

    /// Adds `delta` to input lane (`x`, `vl`)'s count for output `out`, if it is kept.
    #[inline]
    pub(in crate::engine) fn voq_held_add(&mut self, x: u32, vl: u8, out: u32, delta: i8) {
        let Some(held) = self.voq_held_for(x) else { return };
        let c = self.voq_held_cell(held, x, vl, out);
        let held = self.voq_held_mut().expect("counted above");
        held.counts[c] = held.counts[c].wrapping_add_signed(delta);
    }

    /// The output most of input lane (`x`, `vl`)'s counted packets wait for, the first of
    /// equals in port order (`u32::MAX`: none), as counting the queues gives it.
    pub(in crate::engine) fn voq_held_cause(&self, held: &VoqHeld, x: u32, vl: u8) -> u32 {
        let node = self.ports[x as usize].node as usize;
        let pb = self.port_base[node];
        let np = (self.port_base[node + 1] - pb) as usize;
        let row = self.voq_held_cell(held, x, vl, pb);
        let mut best = (0u8, u32::MAX);
        for (k, &held) in held.counts[row..row + np].iter().enumerate() {
            if held > best.0 {
                best = (held, pb + k as u32);
            }
        }
        best.1
    }
}

impl IbState {
    /// The answer to token `token`, asked for lane (`p`, `vl`): the port its downstream head
    /// waited for. An open stall takes it as its cause; a closed one adds its time to the edge.
    pub(in crate::engine) fn resolve_cause(&mut self, p: u32, vl: u8, token: u32, cause: u32) -> bool {
        let i = self.ix(p, vl);
        let st = &mut self.tx[i].stall;
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
                self.tx[i] = o.tx[i];
                std::mem::swap(&mut self.requests[i], &mut o.requests[i]);
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
                self.rx[i] = o.rx[i];
                self.voq_deadline[i] = o.voq_deadline[i];
            }
            self.xbar_free_at[p] = o.xbar_free_at[p];
            self.pool_free[p] = o.pool_free[p];
            self.out[p] = o.out[p].clone();
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

    /// A packet of input lane (`x`, `vl`) joined output `out`'s virtual output queue, which
    /// held `len_before`: counted if it lies among the first `SCAN_MAX`.
    #[inline(always)]
    pub(in crate::engine) fn ib_voq_joined(&mut self, x: u32, vl: u8, out: u32, len_before: usize) {
        if self.part.is_some() && len_before < crate::models::crossbar::oldest::SCAN_MAX {
            self.voq_held_add(x, vl, out, 1);
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
            let scan = crate::models::crossbar::oldest::SCAN_MAX;
            let z = (k < scan && len_before > scan).then(|| {
                let ib = self.ibr();
                ib.voq[ib.ix(p, vl)][scan - 1].ingress
            });
            if k < scan {
                self.voq_held_add(x, vl, p, -1);
            }
            if let Some(z) = z {
                self.voq_held_add(z, vl, p, 1);
            }
            self.note_cause(now, origin, x, vl);
            if let Some(z) = z {
                self.note_cause(now, origin, z, vl);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{Crossbar, EngineConfig, Fabric, FlowSpec, XbarArbitration};
    use crate::ib::IbConfig;
    use crate::routing::Routes;
    use crate::topology::{LinkInfo, LinkKind, fat_tree};
    use sim_core::{BitsPerSec, Bytes, Duration, RunLimits, SimTime, WheelQueue};

    /// The counters a partition keeps of its virtual output queues, and the count that stops
    /// early, agree with counting every queue to the end, at every hand-over of an incast
    /// split in two (pods 0-3 and 4-7 of a k=8 fat-tree, the core switches shared out) whose
    /// queues grow past `SCAN_MAX`: small packets, so that the queues towards the sink hold
    /// hundreds.
    #[test]
    fn voq_counters_agree_with_counting_the_queues() {
        // Oldest first takes a queue's packets from its head; round-robin behind a crossbar
        // of limited speed-up takes them from anywhere in the first 1,024, past `SCAN_MAX`.
        let round_robin = Crossbar {
            speedup_percent: Some(100),
            arbitration: XbarArbitration::RoundRobin,
            ..Default::default()
        };
        for crossbar in [Crossbar::default(), round_robin] {
            counters_agree(crossbar);
        }
    }

    fn counters_agree(crossbar: Crossbar) {
        let link = LinkInfo {
            rate: BitsPerSec::from_gbps(100),
            delay: Duration::from_ns(200),
            kind: LinkKind::Network,
        };
        let topo = fat_tree::build(8, link, link).expect("a k=8 fat-tree");
        let flows: Vec<FlowSpec> = (1..128)
            .map(|src| FlowSpec {
                src,
                dst: 0,
                size: Bytes(1 << 20),
                ..Default::default()
            })
            .collect();
        let cfg = EngineConfig {
            mtu_bytes: 256,
            ib: Some(IbConfig::default()),
            crossbar,
            ..Default::default()
        };
        let parts: Vec<u8> = topo
            .graph
            .node_indices()
            .map(|v| topo.graph[v].pod.map_or(v.index() % 2, |p| (p / 4) as usize) as u8)
            .collect();
        let mut f: Vec<Fabric> = (0..2)
            .map(|me| {
                let mut f = Fabric::new(&topo, Routes::ecmp(&topo), cfg.clone(), flows.clone()).expect("a fabric");
                f.set_partition(parts.clone(), me);
                f
            })
            .collect();
        let mut s: Vec<_> = f.iter().map(|f| f.scheduler::<WheelQueue<_>>()).collect();
        let window_ps = f[0].lookahead().expect("links between the partitions").ps();
        let scan = crate::models::crossbar::oldest::SCAN_MAX;
        let (mut longest, mut named) = (0usize, 0u32);
        for window in 1..=500u64 {
            let limits = RunLimits {
                end_time: Some(SimTime(window * window_ps - 1)),
                ..Default::default()
            };
            let mut to: [Vec<_>; 2] = Default::default();
            for (f, s) in f.iter_mut().zip(s.iter_mut()) {
                sim_core::run(f, s, &limits, |_| std::ops::ControlFlow::Continue(()));
                f.take_outbox(&mut to);
            }
            for (me, items) in to.into_iter().enumerate() {
                f[me].take_in(&mut s[me], items);
            }
            for f in &f {
                let kept = f.part.as_ref().and_then(|ps| ps.voq_held.as_ref());
                assert_eq!(kept, f.voq_held_now().as_ref(), "counters after window {window}");
                let ib = f.ibr();
                for x in (0..f.ports.len() as u32).filter(|&x| ib.voq_port[x as usize]) {
                    longest = longest.max(ib.voq[ib.ix(x, 0)].len());
                    // Every queue counted to the end, the first of equals kept.
                    let node = f.ports[x as usize].node as usize;
                    let outs = f.port_base[node]..f.port_base[node + 1];
                    let count = |out: &u32| {
                        ib.voq[ib.ix(*out, 0)]
                            .iter()
                            .take(scan)
                            .filter(|e| e.ingress == x)
                            .count()
                    };
                    let most = outs.clone().map(|out| count(&out)).max().unwrap_or(0);
                    let first = outs
                        .clone()
                        .find(|out| most > 0 && count(out) == most)
                        .unwrap_or(u32::MAX);
                    assert_eq!(f.voq_count_cause(x, 0), first, "input {x} after window {window}");
                    if let Some(held) = f.voq_held_for(x) {
                        let cause = f.voq_held_cause(held, x, 0);
                        assert_eq!(cause, first, "input {x} after window {window}");
                        named += u32::from(cause != u32::MAX);
                    }
                }
            }
        }
        assert!(longest > 2 * scan, "{crossbar:?}: a queue grew to {longest} only");
        assert!(named > 100, "{crossbar:?}: {named} causes named");
    }
}
