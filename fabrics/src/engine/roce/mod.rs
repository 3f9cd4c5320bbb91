//! RoCEv2 mechanics in the engine: shared-buffer switches with 8 priorities, PFC frames on
//! the reverse link, strict priority + DWRR egress scheduling, ECN marking, CNP/ACK/NACK
//! generation at the receiver NIC, sender congestion control (DCQCN, TIMELY, HPCC) with one
//! timer event per flow, HPCC's INT records (`int.rs`), go-back-N for lossy priorities, the
//! pause tree and run-time deadlock detection. The models themselves are pure state machines in `models/`
//! (`buffer.rs` `SharedBuffer`, `pfc/`, `marking.rs`, `cc/`); this file wires them.
//!
//! ## A packet through a switch
//! A packet arrives (store-and-forward, after the port-to-port latency), is routed, and is
//! offered to the switch's MMU with its ingress port and priority (`Packet::vl`, the flow's
//! `class`). Dropped: counted by cause. Accepted: it joins the egress queue of its priority;
//! when the admission crossed XOFF of (ingress, priority), the ingress port's pause sender (`models/pfc/`)
//! emits a PAUSE which waits on that port's transmitter *ahead of any data* (a MAC control
//! frame) and crosses the link with its delay. The packet leaves the MMU when it starts on
//! the egress wire; if that brings (ingress, priority) to XON, a RESUME follows the same way.
//! Either hook can return either edge (an admission XON, a release XOFF: the dynamic threshold
//! moves with the pool), and every edge goes to the pause sender.
//!
//! ## Egress scheduling
//! A port sends, in order: a pending PFC frame; then (switch) the highest priority of
//! `strict_mask` with a packet that PFC allows, else DWRR over the other priorities (quantum
//! `dwrr_quantum_bytes` each); (host NIC) control packets (CNP, ACK, NACK), then data
//! round-robin over the flows whose congestion control and PFC allow them. A priority paused
//! by the peer never starts a frame (asserted); a frame already started completes.
//!
//! ## PFC receiver
//! A PFC frame arriving at a node stops the priorities it names on the node's port that sends
//! over that link (`PfcReceiver`), for the quanta it carries; RESUME (quanta 0) or the timer's
//! expiry (a port timer) lets them go again. The pause tree records, per (paused port, pausing
//! port, priority), the time spent paused.
//!
//! ## Deadlock
//! At every PAUSE refresh the engine looks for a cycle of paused (egress port, priority) pairs
//! where each one's peer holds, in a paused egress queue, packets that came in from it (a
//! cyclic buffer dependency with every member paused for at least one refresh period). Found:
//! the cycle and the time it closed are recorded and the run ends ([`RoceState::deadlock`]).

use super::device::DeviceModel;
use super::{CtrlFrame, Device, Ev, Fabric, LinkFc, Packet, PacketKind};
use crate::models::buffer::{Admit, DropCause, SharedBuffer, SharedBufferConfig};
use crate::models::cc::{DcqcnParams, HpccParams, IntHop, TimelyParams};
use crate::models::marking::{Marking, RedEcn, RedParams};
use crate::models::pfc::{
    self, AnyPauseSender, N_PRIORITIES, PauseSender, PfcEdge, PfcFrame, PfcReceiver, PfcWatchdog,
};
use crate::models::{AnyCc, CongestionControl, Dcqcn, Hpcc, Timely};
use crate::roce::frame::{PAUSE_WIRE_BYTES, RoceFrame};
use sim_core::{BitsPerSec, Bytes, Duration, EventQueue, Origin, Scheduler, SimTime, serialization_time};
use std::collections::{BTreeMap, VecDeque};

mod config;
mod deadlock;
mod host;
pub(in crate::engine) mod int;
mod pfc_link;
mod qp;
mod switch;

pub use config::*;
pub use deadlock::Deadlock;
pub(in crate::engine) use host::RoceHost;
pub(in crate::engine) use switch::RoceSwitch;
use switch::{PrioQueue, QueuedPacket};

const NP: usize = N_PRIORITIES;

/// Counters of one port of a RoCEv2 fabric, per priority where it applies.
#[derive(Clone, Debug, Default)]
pub struct RocePortStats {
    /// PAUSE frames (incl. refreshes) and RESUME frames this port sent (it is the ingress of
    /// the congested node).
    pub pause_tx: [u64; NP],
    pub resume_tx: [u64; NP],
    /// PFC frames this port received (it is paused or resumed).
    pub pfc_rx: [u64; NP],
    /// Data packets marked CE when leaving / joining this port's queue.
    pub ecn_marked: [u64; NP],
    /// Drops at this egress port by cause: lossless headroom full, lossy threshold, pool full.
    pub drops_headroom: u64,
    pub drops_lossy_threshold: u64,
    pub drops_buffer_full: u64,
    /// Largest headroom use of this ingress port (any lossless priority), bytes.
    pub headroom_max_bytes: u64,
    /// Largest egress bytes of (this port, priority) seen.
    pub queue_max_bytes: [u64; NP],
    /// CNPs this port sent (a receiver NIC) and received (a sender NIC's port).
    pub cnps_tx: u64,
    pub cnps_rx: u64,
    /// PFC watchdog: storms declared on this egress port, packets it dropped in storms.
    pub watchdog_storms: u64,
    pub drops_watchdog: u64,
}

/// Whole-fabric RoCEv2 counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoceTotals {
    pub pause_frames: u64,
    pub resume_frames: u64,
    pub ecn_marked: u64,
    pub cnps_sent: u64,
    pub cnps_received: u64,
    pub acks_sent: u64,
    pub nacks_sent: u64,
    /// Data packets sent again by go-back-N.
    pub retransmitted: u64,
    /// Go-back-N timeouts that fired.
    pub timeouts: u64,
    /// Data packets the receiver discarded (out of order or duplicate, go-back-N).
    pub receiver_discards: u64,
    /// Control packets (CNP/ACK/NACK) dropped on a lossy priority.
    pub control_drops: u64,
    pub drops_headroom: u64,
    pub drops_lossy_threshold: u64,
    pub drops_buffer_full: u64,
    /// PFC watchdog storms declared and data/control packets dropped by them.
    pub watchdog_storms: u64,
    pub drops_watchdog: u64,
}

impl RoceTotals {
    /// Adds another partition's counters (`engine/partition.rs`).
    fn absorb(&mut self, o: &RoceTotals) {
        let RoceTotals {
            pause_frames,
            resume_frames,
            ecn_marked,
            cnps_sent,
            cnps_received,
            acks_sent,
            nacks_sent,
            retransmitted,
            timeouts,
            receiver_discards,
            control_drops,
            drops_headroom,
            drops_lossy_threshold,
            drops_buffer_full,
            watchdog_storms,
            drops_watchdog,
        } = o;
        self.pause_frames += pause_frames;
        self.resume_frames += resume_frames;
        self.ecn_marked += ecn_marked;
        self.cnps_sent += cnps_sent;
        self.cnps_received += cnps_received;
        self.acks_sent += acks_sent;
        self.nacks_sent += nacks_sent;
        self.retransmitted += retransmitted;
        self.timeouts += timeouts;
        self.receiver_discards += receiver_discards;
        self.control_drops += control_drops;
        self.drops_headroom += drops_headroom;
        self.drops_lossy_threshold += drops_lossy_threshold;
        self.drops_buffer_full += drops_buffer_full;
        self.watchdog_storms += watchdog_storms;
        self.drops_watchdog += drops_watchdog;
    }
}

/// The RoCEv2 state of a fabric; per-priority arrays are indexed by `port * 8 + prio`.
pub struct RoceState {
    pub cfg: RoceConfig,
    /// MMU of each switch (by node; `None` for hosts).
    mmu: Vec<Option<SharedBuffer>>,
    // Per port and priority.
    q: Vec<PrioQueue>,
    paused_since: Vec<SimTime>,
    // Per port.
    rr: Vec<u8>,
    /// Bit `prio` set: the queue of (port, prio) holds a packet.
    nonempty: Vec<u8>,
    /// The pausing side of each port (`models/pfc/`: 802.1Qbb or 802.3x, `RoceConfig::pause`).
    pfc_tx: Vec<AnyPauseSender>,
    pfc_rx: Vec<PfcReceiver>,
    timer_at: Vec<SimTime>,
    pub port_stats: Vec<RocePortStats>,
    // Per host: control packets (CNP, ACK, NACK) waiting for the NIC.
    ctrl_q: Vec<VecDeque<u32>>,
    /// Per flow: its queue pair's sender side (one line, `qp.rs`) and receiver side.
    send: Vec<qp::QpSend>,
    recv: Vec<qp::QpRecv>,
    ecn: Option<RedEcn>,
    /// Refresh period used by deadlock detection (the shortest of the ports').
    window: Duration,
    pub totals: RoceTotals,
    /// Paused time per (paused port, pausing port, priority), closed intervals.
    pause_edges: BTreeMap<(u32, u32, u8), u64>,
    /// Who paused (port, prio) now (the pausing port), `u32::MAX` when not paused.
    paused_by: Vec<u32>,
    pub deadlock: Option<Deadlock>,
    /// Per port: bit `prio` set while `paused_by` names a pausing port (the deadlock search
    /// tests a node's ports in one cache line, not a line each).
    paused_mask: Vec<u8>,
    /// Per (node, priority), `node * 8 + prio`: bit `i` set while the node's port `i` (local
    /// index, below 64) is paused on `prio`, so the deadlock search visits only paused ports
    /// of a node of up to 64 ports (it tested all of a node's ports at every step).
    node_paused: Vec<u64>,
    /// Per port: its node and local index (for `node_paused`).
    port_node_local: Vec<(u32, u32)>,
    /// The deadlock search's set of explored ports, kept between searches (`deadlock.rs`).
    search_done: deadlock::Visited,
    /// Bit `prio` clear: the paused ports of `prio` between switches form no cycle, so no
    /// deadlock search can find one and refreshes skip it (`deadlock.rs`).
    pause_maybe_cyclic: u8,
    /// Nodes reached by the cycle check of a new pause (`deadlock.rs`).
    nodes_seen: deadlock::Visited,
    /// Scratch stack of that check.
    node_stack: Vec<u32>,
    /// Wire bytes of a CNP and of an ACK/NACK.
    ctrl_wire: (u32, u32),
    /// PFC edges found by MMU operations, applied once the operation is over.
    pending_edges: Vec<(u32, u8, PfcEdge)>,
    /// Every switch's headroom covers its bound: a lossless drop is a bug (panics).
    lossless_asserted: bool,
    /// Rate samples `(flow, time, rate b/s)` in time order (`roce_rates.csv`).
    pub rate_samples: Vec<(u32, SimTime, u64)>,
    /// Sampling stopped at `rate_sample_max_rows`.
    pub rate_samples_truncated: bool,
    /// PFC watchdog per port (empty when off).
    watchdog: Vec<PfcWatchdog>,
    /// (port, priority) in a watchdog storm.
    storm: Vec<bool>,
    /// Switch arrivals may pass straight through an idle egress (`roce_switch_pass`); off
    /// only in the test that checks the pass-through changes nothing.
    pass_through: bool,
    /// Packets that passed straight through (a diagnostic, in no report).
    passes: u64,
    /// INT records of the packets in flight, by packet id (HPCC only; `None`: no INT).
    int: Option<int::IntTable>,
    /// HPCC's base RTT T in effect (`auto` resolved), `None` without HPCC.
    hpcc_base_rtt: Option<Duration>,
}

impl RoceState {
    #[inline]
    fn ix(port: u32, prio: u8) -> usize {
        port as usize * NP + prio as usize
    }

    /// Prefetch hint for the MMU record an arrival at switch `node` over its port `local`
    /// (node-local index) with priority `prio` is admitted to.
    #[inline(always)]
    pub(super) fn prefetch_admission(&self, node: u32, local: u32, prio: u8) {
        if let Some(Some(mmu)) = self.mmu.get(node as usize) {
            mmu.prefetch_ingress(local, prio);
        }
    }

    /// Prefetch hint for the egress lane (`port`, `prio`) an arriving packet will join: its
    /// queue record, the port's mask of non-empty queues and its pause timer (an idle port
    /// picks the packet at once).
    #[inline(always)]
    pub(super) fn prefetch_lane(&self, port: u32, prio: u8) {
        if let Some(q) = self.q.get(Self::ix(port, prio)) {
            sim_core::prefetch(q);
        }
        if let Some(m) = self.nonempty.get(port as usize) {
            sim_core::prefetch(m);
        }
        if let Some(rx) = self.pfc_rx.get(port as usize) {
            rx.prefetch_pause(prio);
        }
    }

    /// Port `p`'s timer is armed for `now`.
    pub(super) fn timer_due(&self, p: u32, now: SimTime) -> bool {
        self.timer_at[p as usize] == now
    }

    /// What of this RoCEv2 configuration keeps a run from being split into partitions
    /// (`engine/partition.rs`), if anything.
    pub(in crate::engine) fn partition_refusal(&self) -> Option<&'static str> {
        if self.cfg.rate_sample.is_some() {
            return Some("rate samples are taken across the whole fabric at once");
        }
        None
    }

    /// Folds the state another partition of the run kept for its ports, nodes and hosts
    /// into this one (`engine/partition.rs`): per port and priority, per node, per host from
    /// their partition; counters and pause-tree times summed; queued packet ids moved by
    /// `rehome`. The flows' transport state is [`RoceState::absorb_flows`].
    pub(in crate::engine) fn absorb(
        &mut self,
        o: &mut RoceState,
        theirs_port: &[bool],
        theirs_node: &[bool],
        theirs_host: &[bool],
        rehome: &mut dyn FnMut(u32) -> u32,
    ) {
        assert!(
            self.deadlock.is_none() && o.deadlock.is_none(),
            "a partitioned run found a deadlock"
        );
        for (p, _) in theirs_port.iter().enumerate().filter(|(_, t)| **t) {
            for i in p * NP..(p + 1) * NP {
                std::mem::swap(&mut self.q[i], &mut o.q[i]);
                for e in self.q[i].ids.iter_mut() {
                    e.id = rehome(e.id);
                }
                self.paused_since[i] = o.paused_since[i];
                self.paused_by[i] = o.paused_by[i];
                if let (Some(a), Some(b)) = (self.storm.get_mut(i), o.storm.get(i)) {
                    *a = *b;
                }
            }
            self.rr[p] = o.rr[p];
            self.nonempty[p] = o.nonempty[p];
            std::mem::swap(&mut self.pfc_tx[p], &mut o.pfc_tx[p]);
            std::mem::swap(&mut self.pfc_rx[p], &mut o.pfc_rx[p]);
            self.timer_at[p] = o.timer_at[p];
            std::mem::swap(&mut self.port_stats[p], &mut o.port_stats[p]);
            self.paused_mask[p] = o.paused_mask[p];
            if let (Some(a), Some(b)) = (self.watchdog.get_mut(p), o.watchdog.get_mut(p)) {
                std::mem::swap(a, b);
            }
        }
        for (n, _) in theirs_node.iter().enumerate().filter(|(_, t)| **t) {
            std::mem::swap(&mut self.mmu[n], &mut o.mmu[n]);
            for i in n * NP..(n + 1) * NP {
                self.node_paused[i] = o.node_paused[i];
            }
        }
        for (h, _) in theirs_host.iter().enumerate().filter(|(_, t)| **t) {
            self.ctrl_q[h] = o.ctrl_q[h].iter().map(|&id| rehome(id)).collect();
        }
        for (k, d) in std::mem::take(&mut o.pause_edges) {
            *self.pause_edges.entry(k).or_insert(0) += d;
        }
        self.pause_maybe_cyclic |= o.pause_maybe_cyclic;
        if let (Some(a), Some(b)) = (self.ecn.as_mut(), o.ecn.as_mut()) {
            a.absorb(b, theirs_port);
        }
        self.totals.absorb(&o.totals);
    }

    /// Packet `id`'s INT records, when the run keeps them (HPCC).
    pub(in crate::engine) fn int_of(&self, id: u32) -> Option<int::IntStack> {
        self.int.as_ref().map(|t| t.get(id))
    }

    /// Packet `id` carries `stack` (a packet taken in from another partition, or moved into
    /// this arena by a fold).
    pub(in crate::engine) fn set_int(&mut self, id: u32, stack: int::IntStack) {
        if let Some(t) = self.int.as_mut() {
            t.set(id, stack);
        }
    }

    /// Folds the queue pairs' state another partition kept: a flow's sender side from the
    /// partition of its source (`theirs_src[f]`), its receiver side (CNP pacing, expected
    /// sequence, NACK sent) from its destination's (`theirs_dst[f]`).
    pub(in crate::engine) fn absorb_flows(&mut self, o: &RoceState, theirs_src: &[bool], theirs_dst: &[bool]) {
        for f in 0..theirs_src.len() {
            if theirs_src[f] {
                self.send[f] = o.send[f];
            }
            if theirs_dst[f] {
                self.recv[f] = o.recv[f];
            }
        }
    }

    /// Bytes queued at (port, prio).
    pub fn queue_bytes(&self, port: u32, prio: u8) -> u64 {
        self.q[Self::ix(port, prio)].bytes
    }
    /// PFC frames received by `port` for `prio`, and the time it has been paused up to `now`.
    pub fn paused(&self, port: u32, prio: u8, now: SimTime) -> (u64, Duration) {
        let r = &self.pfc_rx[port as usize];
        (r.frames_received(prio), r.paused_time(prio, now))
    }
    /// Paused time of `port`, all priorities, up to `now`.
    pub fn port_paused_time(&self, port: u32, now: SimTime) -> Duration {
        Duration((0..NP as u8).map(|p| self.paused(port, p, now).1.ps()).sum())
    }
    /// HPCC's base RTT T in effect (the `auto` rule resolved for this run); `None` without HPCC.
    pub fn hpcc_base_rtt(&self) -> Option<Duration> {
        self.hpcc_base_rtt
    }
    /// The switch MMU of `node` (`None` for hosts).
    pub fn mmu(&self, node: u32) -> Option<&SharedBuffer> {
        self.mmu[node as usize].as_ref()
    }

    /// The pause tree up to `now`: `(paused port, pausing port, priority, paused ps)`,
    /// longest first. The pausing port belongs to the congested node (it is that node's
    /// ingress from the paused port); a pausing port that is never paused itself is a root.
    pub fn pause_edges(&self, now: SimTime) -> Vec<(u32, u32, u8, u64)> {
        let mut m = self.pause_edges.clone();
        for (i, &by) in self.paused_by.iter().enumerate() {
            if by != u32::MAX {
                let (port, prio) = ((i / NP) as u32, (i % NP) as u8);
                let until = self.pfc_rx[port as usize].paused_until(prio).min(now);
                let d = until.ps().saturating_sub(self.paused_since[i].ps());
                *m.entry((port, by, prio)).or_insert(0) += d;
            }
        }
        let mut v: Vec<_> = m.into_iter().map(|((a, b, p), d)| (a, b, p, d)).collect();
        v.sort_by(|x, y| y.3.cmp(&x.3).then((x.0, x.1, x.2).cmp(&(y.0, y.1, y.2))));
        v
    }

    /// Records that (port, prio) is paused or no longer (the masks of `paused_by`).
    pub(super) fn set_paused(&mut self, port: u32, prio: u8, paused: bool) {
        let (node, local) = self.port_node_local[port as usize];
        let node_bit = if local < 64 { 1u64 << local } else { 0 };
        let m = &mut self.node_paused[node as usize * NP + prio as usize];
        if paused {
            self.paused_mask[port as usize] |= 1 << prio;
            *m |= node_bit;
        } else {
            self.paused_mask[port as usize] &= !(1 << prio);
            *m &= !node_bit;
        }
    }

    /// The ports of `node` (first port `base`, `n` ports) paused on `prio`, ascending; from
    /// the node's mask where it has at most 64 ports.
    fn paused_ports(&self, node: u32, base: u32, n: u32, prio: u8) -> impl Iterator<Item = u32> + '_ {
        let node_mask = (n <= 64).then(|| self.node_paused[node as usize * NP + prio as usize]);
        paused_in(node_mask, &self.paused_mask, base, n, prio)
    }

    /// Closes the pause interval of (port, prio) at `end`.
    fn close_pause(&mut self, port: u32, prio: u8, end: SimTime) {
        let i = Self::ix(port, prio);
        if self.paused_by[i] == u32::MAX {
            return;
        }
        let d = end.ps().saturating_sub(self.paused_since[i].ps());
        *self.pause_edges.entry((port, self.paused_by[i], prio)).or_insert(0) += d;
        self.paused_by[i] = u32::MAX;
        self.set_paused(port, prio, false);
        self.paused_since[i] = SimTime::MAX;
        if let Some(wd) = self.watchdog.get_mut(port as usize) {
            wd.on_pause_state(end, prio, false);
            self.storm[i] = false;
        }
    }

    /// Data packets waiting in egress queues.
    pub(super) fn data_packets_buffered(&self, packets: &super::PacketArena) -> u64 {
        self.q
            .iter()
            .flat_map(|q| q.ids.iter())
            .filter(|e| packets.get(e.id).kind == PacketKind::Data)
            .count() as u64
    }
}

/// Ports `base..base + n` paused on `prio`, ascending: the bits of `node_mask` (bit `i`: port
/// `base + i`) when given, else those whose `per_port` mask has bit `prio`.
fn paused_in(node_mask: Option<u64>, per_port: &[u8], base: u32, n: u32, prio: u8) -> impl Iterator<Item = u32> + '_ {
    let mut mask = node_mask.unwrap_or(0);
    let mut next = base;
    std::iter::from_fn(move || {
        if node_mask.is_some() {
            if mask == 0 {
                return None;
            }
            let i = mask.trailing_zeros();
            mask &= mask - 1;
            return Some(base + i);
        }
        while next < base + n {
            let p = next;
            next += 1;
            if per_port[p as usize] & (1 << prio) != 0 {
                return Some(p);
            }
        }
        None
    })
}

#[cold]
#[inline(never)]
fn not_roce() -> ! {
    panic!("RoCE path runs only on a RoCEv2 fabric")
}

/// A rate `r` given for line rate `old`, scaled to line rate `new` (at least 1 b/s): TIMELY's δ
/// and HPCC's R_AI on a NIC faster than the slowest host link.
fn scale_to_line(r: BitsPerSec, old: BitsPerSec, new: BitsPerSec) -> BitsPerSec {
    BitsPerSec((r.0 as u128 * new.0 as u128 / old.0.max(1) as u128).max(1) as u64)
}

impl Fabric {
    // Inlined: every hop takes these several times (a call each was 34 instructions per hop).
    #[inline(always)]
    fn rs(&mut self) -> &mut RoceState {
        self.roce.as_deref_mut().unwrap_or_else(|| not_roce())
    }
    #[inline(always)]
    fn rr(&self) -> &RoceState {
        self.roce.as_deref().unwrap_or_else(|| not_roce())
    }

    /// Builds the RoCE state and the per-flow congestion controllers.
    pub(super) fn roce_init(&mut self) -> Result<(), super::EngineError> {
        let cfg = self.cfg.roce.clone().expect("RoCE configuration");
        let max_wire = self.cfg.mtu_bytes + self.cfg.header_bytes;
        cfg.validate(max_wire).map_err(super::EngineError::BadConfig)?;
        for (i, f) in self.flows.iter().enumerate() {
            let prio = f.class;
            if prio as usize >= NP || cfg.active_mask() & (1 << prio) == 0 {
                return Err(super::EngineError::BadConfig(format!(
                    "flow {i} has class {prio}, which is neither a lossless nor a lossy priority of the RoCE fabric"
                )));
            }
        }
        let n_ports = self.ports.len();
        let n_nodes = self.port_base.len() - 1;
        let mut mmu = Vec::with_capacity(n_nodes);
        let mut lossless_asserted = true;
        for n in 0..n_nodes {
            if self.device[n] != Device::RoceSwitch {
                mmu.push(None);
                continue;
            }
            let (a, b) = (self.port_base[n] as usize, self.port_base[n + 1] as usize);
            if a == b {
                mmu.push(None);
                continue;
            }
            let bound = (a..b)
                .map(|p| {
                    let port = &self.ports[p];
                    headroom_bound_bytes(port.rate, port.delay, self.cfg.switch_latency, max_wire)
                })
                .max()
                .unwrap_or(0);
            let headroom = if cfg.lossless_mask == 0 {
                0
            } else {
                cfg.headroom_bytes.unwrap_or(bound)
            };
            lossless_asserted &= headroom >= bound;
            let total = cfg
                .buffer_bytes
                .unwrap_or(DEFAULT_BUFFER_PER_PORT_BYTES * (b - a) as u64);
            let sb = SharedBufferConfig {
                total_bytes: total,
                reserve_bytes: cfg.reserve_bytes,
                headroom_bytes: headroom,
                resume_offset_bytes: cfg.resume_offset_bytes,
                lossless_mask: cfg.lossless_mask,
                lossy_mask: cfg.lossy_mask,
                port_alpha_shift: vec![cfg.alpha_shift; b - a],
                xoff_threshold_bytes: cfg.xoff_threshold_bytes,
            };
            sb.check()
                .map_err(|e| super::EngineError::BadConfig(format!("switch node {n}: {e}")))?;
            mmu.push(Some(SharedBuffer::new(sb)));
        }
        let pfc_tx = self
            .ports
            .iter()
            .map(|p| match cfg.pfc_refresh {
                Some(r) => AnyPauseSender::new(cfg.pause, cfg.pause_quanta, r),
                None => AnyPauseSender::new(
                    cfg.pause,
                    cfg.pause_quanta,
                    Duration((pfc::pause_duration(cfg.pause_quanta, p.rate).ps() / 2).max(1)),
                ),
            })
            .collect();
        let window = self
            .ports
            .iter()
            .map(|p| match cfg.pfc_refresh {
                Some(r) => r,
                None => Duration(pfc::pause_duration(cfg.pause_quanta, p.rate).ps() / 2),
            })
            .min()
            .unwrap_or(Duration::ZERO);
        let pfc_rx = self.ports.iter().map(|p| PfcReceiver::new(p.rate)).collect();
        let ecn = cfg.ecn.map(|r| {
            RedEcn::new(
                r,
                sim_core::RngStreams::new(self.cfg.seed),
                sim_core::rng::stream::ECN_MARKING,
            )
        });
        // Which flows run a queue pair, and at what line rate: the first network port on the
        // path, PFC or (the base fabric) none (the host's own port on a network of hosts, the
        // NIC's network port in a cluster); flows that stay on credit links are load/store.
        let qp_line: Vec<Option<BitsPerSec>> = (0..self.flows.len() as u32)
            .map(|f| {
                self.flow_path(f)
                    .into_iter()
                    .find(|&p| self.ports[p as usize].link_fc != LinkFc::Credit)
                    .map(|p| self.ports[p as usize].rate)
            })
            .collect();
        // HPCC's `auto` base RTT: the largest of the run's queue pairs (HPCC-sim `GLOBAL_T 1`).
        let hpcc_auto_rtt = if matches!(cfg.cc, RoceCc::Hpcc(HpccParams { base_rtt: None, .. })) {
            let ack_wire = cfg.frame.ack_wire_bytes();
            let rtt = (0..self.flows.len() as u32)
                .filter(|&f| qp_line[f as usize].is_some())
                .map(|f| self.base_rtt_ps(f, ack_wire))
                .max()
                .unwrap_or(0);
            Duration(rtt.max(1))
        } else {
            Duration(1)
        };
        // Per-flow congestion control at the queue pair's line rate.
        for (i, line) in qp_line.iter().enumerate() {
            let Some(line) = *line else { continue };
            let cc = match &cfg.cc {
                RoceCc::None => continue,
                RoceCc::Dcqcn(p) => {
                    let mut p = *p;
                    p.line_rate = line;
                    p.min_rate = p.min_rate.min(line);
                    AnyCc::Dcqcn(Dcqcn::new(p))
                }
                RoceCc::Timely(p) => AnyCc::Timely(Timely::new(TimelyParams {
                    delta: scale_to_line(p.delta, p.line_rate, line),
                    line_rate: line,
                    min_rate: p.min_rate.min(line),
                    ..*p
                })),
                RoceCc::Hpcc(p) => AnyCc::Hpcc(Hpcc::new(HpccParams {
                    rate_ai: scale_to_line(p.rate_ai, p.line_rate, line),
                    line_rate: line,
                    min_rate: p.min_rate.min(line),
                    base_rtt: p.base_rtt.or(Some(hpcc_auto_rtt)),
                    ..*p
                })),
            };
            self.flow_state[i].cc = cc;
        }
        let n_flows = self.flows.len();
        let frame = cfg.frame;
        let send = (0..n_flows as u32)
            .map(
                |f| match (cfg.go_back_n.filter(|_| qp_line[f as usize].is_some()), cfg.gbn_window) {
                    (None, _) | (_, GbnWindow::Unlimited) => u64::MAX,
                    (Some(_), GbnWindow::Bytes(b)) => b.max(self.cfg.mtu_bytes as u64),
                    (Some(_), GbnWindow::Bdp) => {
                        let line = qp_line[f as usize].expect("a queue pair");
                        self.bdp_window_bytes(f, line, frame.ack_wire_bytes())
                    }
                },
            )
            .zip(&qp_line)
            .map(|(gbn_window, line)| qp::QpSend::new(line.is_some(), gbn_window))
            .collect();
        let (watchdog, storm) = match cfg.pfc_watchdog {
            Some(w) => (vec![PfcWatchdog::new(w); n_ports], vec![false; n_ports * NP]),
            None => (Vec::new(), Vec::new()),
        };
        self.roce = Some(Box::new(RoceState {
            mmu,
            q: vec![PrioQueue::default(); n_ports * NP],
            paused_since: vec![SimTime::MAX; n_ports * NP],
            paused_by: vec![u32::MAX; n_ports * NP],
            rr: vec![0; n_ports],
            nonempty: vec![0; n_ports],
            pfc_tx,
            pfc_rx,
            timer_at: vec![SimTime::MAX; n_ports],
            port_stats: vec![RocePortStats::default(); n_ports],
            ctrl_q: vec![VecDeque::new(); self.nics.len()],
            send,
            recv: vec![qp::QpRecv::default(); n_flows],
            ecn,
            window,
            totals: RoceTotals::default(),
            pause_edges: BTreeMap::new(),
            deadlock: None,
            paused_mask: vec![0; n_ports],
            node_paused: vec![0; n_nodes * NP],
            port_node_local: self
                .ports
                .iter()
                .enumerate()
                .map(|(p, port)| (port.node, p as u32 - self.port_base[port.node as usize]))
                .collect(),
            search_done: deadlock::Visited::new(n_ports),
            pause_maybe_cyclic: 0,
            nodes_seen: deadlock::Visited::new(n_nodes),
            node_stack: Vec::new(),
            ctrl_wire: (frame.cnp_wire_bytes(), frame.ack_wire_bytes()),
            pending_edges: Vec::new(),
            lossless_asserted,
            rate_samples: Vec::new(),
            rate_samples_truncated: false,
            watchdog,
            storm,
            pass_through: true,
            passes: 0,
            int: cfg.cc.needs_int().then(int::IntTable::default),
            hpcc_base_rtt: match &cfg.cc {
                RoceCc::Hpcc(p) => Some(p.base_rtt.unwrap_or(hpcc_auto_rtt)),
                _ => None,
            },
            cfg,
        }));
        Ok(())
    }

    /// Port `p` may have something to send: start it now, or make sure `TxDone` comes.
    #[inline(always)]
    pub(super) fn roce_kick<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32) {
        if !matches!(self.ports[p as usize].device, Device::RoceHost | Device::RoceSwitch) {
            // A credit device's port on a PFC link (a NIC's network side).
            return self.kick(s, p);
        }
        let now = s.now();
        let port = &self.ports[p as usize];
        if port.txdone_pending {
            return;
        }
        if port.busy_until > now {
            let at = port.busy_until;
            self.roce_wake_at(s, p, at);
            return;
        }
        self.roce_try_start(s, p);
    }

    /// Makes port `p` look again at `at`, when it is free: its `TxDone`; for a GPU on a credit
    /// link (inside a server of a RoCEv2 cluster) its NIC wake-up, as for the endpoints of the
    /// credit path, so that the same-instant order of its sends is theirs (a credit update
    /// arriving at `at` goes out before the next data packet).
    #[inline(always)]
    fn roce_wake_at<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32, at: SimTime) {
        let node = self.ports[p as usize].node;
        if self.ports[p as usize].link_fc == LinkFc::Credit && self.device[node as usize] == Device::RoceHost {
            let h = self.host_of_node[node as usize];
            return self.nic_wake_at(s, h, at);
        }
        self.ports[p as usize].txdone_pending = true;
        s.schedule(at, Origin(p), Ev::TxDone(p));
    }

    /// `TxDone` on a RoCE port.
    #[inline(always)]
    pub(super) fn roce_on_txdone<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32) {
        self.ports[p as usize].txdone_pending = false;
        self.roce_try_start(s, p);
    }

    /// Puts packet `id` on port `p` now and arms `TxDone` for its end, unless `p` is a switch
    /// port with nothing left to send (an arrival or a PFC edge kicks it, and the kick arms
    /// `TxDone` for the same instant: one event fewer per hop, the same order, as `TxDone(p)`
    /// is the only event of its origin).
    #[inline(always)]
    fn roce_transmit<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32, id: u32) {
        let done = self.transmit(s, p, id, SimTime::ZERO);
        let port = &self.ports[p as usize];
        if port.device == Device::RoceSwitch
            && self.ports[p as usize].link_fc != LinkFc::Credit
            && self.rr().nonempty[p as usize] == 0
            && port.ctrl_pending == 0
        {
            return;
        }
        self.roce_wake_at(s, p, done);
    }

    /// Port `p`'s link lets a packet of `payload`/`wire` bytes on priority (= lane) `prio` go
    /// now: no PAUSE from the peer on a PFC link, enough credits on a credit link (a GPU's
    /// NVLink or PCIe port inside a server of a RoCEv2 cluster).
    #[inline(always)]
    fn roce_link_ready(&self, p: u32, prio: u8, payload: u32, wire: u32, now: SimTime) -> bool {
        match self.ports[p as usize].link_fc {
            LinkFc::Pfc => self.roce_may_send(p, prio, now),
            LinkFc::Credit => self.ib_credits_cover(p, prio, payload, wire),
            LinkFc::None => true,
        }
    }

    /// Port `p` is idle: send a PFC frame, or the next packet its scheduler picks.
    fn roce_try_start<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32) {
        let now = s.now();
        {
            let port = &self.ports[p as usize];
            if port.busy_until > now || port.txdone_pending {
                return;
            }
        }
        if let Some(done) = self.roce_send_pending_pfc(s, p) {
            self.roce_wake_at(s, p, done);
            return;
        }
        if self.ports[p as usize].link_fc == LinkFc::Credit
            && let Some(done) = self.ib_send_queued_fc(s, p)
        {
            // A credit update of a GPU's port (inside a server of a RoCEv2 cluster).
            self.roce_wake_at(s, p, done);
            return;
        }
        let node = self.ports[p as usize].node;
        let id = if self.is_host[node as usize] {
            let h = self.host_of_node[node as usize];
            self.roce_nic_pick(s, h, p)
        } else {
            self.roce_switch_pick(now, p)
        };
        if let Some(id) = id {
            let prio = self.packets.get(id).vl;
            match self.ports[p as usize].link_fc {
                LinkFc::Pfc => assert!(
                    self.roce_may_send(p, prio, now),
                    "port {p} started a frame of priority {prio} while paused"
                ),
                LinkFc::Credit => self.ib_charge_credits(p, id),
                LinkFc::None => {}
            }
            self.roce_transmit(s, p, id);
            self.roce_flush_edges(s);
        }
    }

    /// A packet came out of port `p`'s pipe into a RoCEv2 switch: route, admit, queue.
    #[inline]
    pub(super) fn roce_switch_arrive<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32, id: u32) {
        let now = s.now();
        let (node, x, routed_ahead) = {
            let port = &self.ports[p as usize];
            (port.peer_node, port.peer_port, port.routed_ahead)
        };
        let pkt = *self.packets.get(id);
        self.packets.get_mut(id).ingress_port = x;
        // Routed when it was put on the link (`Fabric::route_ahead`), unless by load or on a small fabric.
        let out = if routed_ahead {
            pkt.next_port
        } else {
            self.route_packet(node, id)
        };
        let prio = pkt.vl;
        if self.rr().storm.get(RoceState::ix(out, prio)).is_some_and(|&b| b) {
            self.roce_count_watchdog_drop(out, id);
            return;
        }
        let base = self.port_base[node as usize];
        let wire = pkt.wire_bytes as u64;
        let r = self.rs();
        let mmu = r.mmu[node as usize].as_mut().expect("a switch has an MMU");
        match mmu.admit(x - base, prio, wire) {
            Admit::Dropped(cause) => {
                let lossless = r.cfg.lossless_mask & (1 << prio) != 0;
                let st = &mut r.port_stats[out as usize];
                match cause {
                    DropCause::HeadroomFull => {
                        st.drops_headroom += 1;
                        r.totals.drops_headroom += 1;
                    }
                    DropCause::LossyThreshold => {
                        st.drops_lossy_threshold += 1;
                        r.totals.drops_lossy_threshold += 1;
                    }
                    DropCause::BufferFull => {
                        st.drops_buffer_full += 1;
                        r.totals.drops_buffer_full += 1;
                    }
                }
                debug_assert!(lossless == (cause == DropCause::HeadroomFull));
                let (x_busy, x_pending) = (self.ports[x as usize].busy_until, self.ports[x as usize].ctrl_pending);
                let r = self.roce.as_deref_mut().expect("RoCE fabric");
                if lossless && r.lossless_asserted {
                    let mmu = r.mmu[node as usize].as_ref().expect("a switch has an MMU");
                    panic!(
                        "losslessness broken at {now}: priority {prio} dropped at switch node {node} (ingress port {x}, egress {out}) although the headroom covers the bound; ingress (bytes, headroom) {:?}, headroom limit {} B, PAUSE asserted {}, pending frame {:#x}, port busy until {}",
                        mmu.ingress_bytes(x - base, prio),
                        mmu.config().headroom_bytes,
                        r.pfc_tx[x as usize].is_asserted(prio),
                        x_pending,
                        x_busy,
                    );
                }
                let port = &mut self.ports[out as usize];
                port.stats.drops += 1;
                port.stats.drop_bytes += wire;
                if pkt.kind == PacketKind::Data {
                    self.records[pkt.flow as usize].packets_dropped += 1;
                    self.totals.packets_dropped += 1;
                    self.totals.payload_bytes_dropped += pkt.payload_bytes as u64;
                } else {
                    self.rs().totals.control_drops += 1;
                }
                self.packets.free(id);
                return;
            }
            Admit::Accepted { edge } => {
                let hr = mmu.ingress_bytes(x - base, prio).1;
                if hr > 0 {
                    // Headroom is rarely in use: the port's counters stay out of the cache.
                    let st = &mut r.port_stats[x as usize];
                    st.headroom_max_bytes = st.headroom_max_bytes.max(hr);
                }
                if let Some(edge) = edge {
                    r.pending_edges.push((x, prio, edge));
                }
            }
        }
        // An idle egress with nothing queued sends the packet at once: it skips the queue's
        // ring and the pick, with every other effect of the two (counters, ECN, statistics,
        // MMU) the same and in the same order.
        let through = x != out && self.rr().pass_through && self.roce_switch_idle_for(now, out, prio, pkt.wire_bytes);
        let r = self.rs();
        let i = RoceState::ix(out, prio);
        let mut mark = false;
        if pkt.kind == PacketKind::Data
            && let Some(red) = r.ecn.as_mut()
        {
            mark = red.mark_on_enqueue(out, r.q[i].bytes);
        }
        if mark {
            r.port_stats[out as usize].ecn_marked[prio as usize] += 1;
            r.totals.ecn_marked += 1;
        }
        let q = &mut r.q[i];
        if !through {
            q.ids.push_back(QueuedPacket { id, ingress: x });
        }
        q.bytes += wire;
        let qb = q.bytes;
        let new_max = qb > q.max_bytes;
        if new_max {
            q.max_bytes = qb;
        }
        if !through {
            r.nonempty[out as usize] |= 1 << prio;
        }
        if new_max {
            // A new maximum: mirrored into the port's counters (read by the reports) only then.
            r.port_stats[out as usize].queue_max_bytes[prio as usize] = qb;
        }
        if mark {
            self.packets.get_mut(id).marked = true;
        }
        let port = &mut self.ports[out as usize];
        port.queued_bytes += wire;
        let queued = port.queued_bytes;
        port.stats.queue_bytes.set(now, queued);
        self.roce_flush_edges(s);
        if through {
            return self.roce_switch_pass(s, out, prio, id, x);
        }
        self.roce_kick(s, out);
    }
}

#[cfg(test)]
mod tests {
    use super::paused_in;

    #[test]
    fn paused_ports_by_node_mask_equal_those_by_port_mask() {
        let mut rng = sim_core::RngStreams::new(5).stream(0);
        for case in 0..200u32 {
            let n = 1 + case % 100;
            let base = 7;
            let per_port: Vec<u8> = (0..base + n)
                .map(|_| (rand::Rng::next_u64(&mut rng) & 0xff) as u8)
                .collect();
            for prio in 0..8u8 {
                let want: Vec<u32> = (base..base + n)
                    .filter(|&p| per_port[p as usize] & (1 << prio) != 0)
                    .collect();
                assert_eq!(paused_in(None, &per_port, base, n, prio).collect::<Vec<_>>(), want);
                if n <= 64 {
                    let m = want.iter().fold(0u64, |m, &p| m | 1 << (p - base));
                    assert_eq!(paused_in(Some(m), &per_port, base, n, prio).collect::<Vec<_>>(), want);
                }
            }
        }
    }
}
